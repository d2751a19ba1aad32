// Names of configurations that differ by model or profile (inferprof/compare.hpp).
#include <filesystem>

#include "inferprof/compare.hpp"

namespace inferprof {

std::string model_label(const std::vector<std::string>& models, std::size_t i) {
  namespace fs = std::filesystem;
  const std::string name = fs::path(models[i]).filename().string();
  for (std::size_t j = 0; j < models.size(); ++j)
    if (models[j] != models[i] && fs::path(models[j]).filename().string() == name) return models[i];
  return name.empty() ? models[i] : name;
}

std::string profile_label(const std::vector<Profile>& profiles, std::size_t i) {
  for (std::size_t j = 0; j < profiles.size(); ++j)
    if (profiles[j].source != profiles[i].source && profiles[j].name == profiles[i].name) return profiles[i].source;
  return profiles[i].name;
}

}  // namespace inferprof
