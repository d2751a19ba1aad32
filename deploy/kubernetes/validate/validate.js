// Validates each document of a Kubernetes manifest against the API schemas
// that kubernetes-models bundles (no cluster, no network): node validate.js FILE.
const fs = require("fs");
const yaml = require("js-yaml");
const kinds = {
  "v1/Service": () => require("kubernetes-models/v1/Service").Service,
  "v1/PersistentVolumeClaim": () => require("kubernetes-models/v1/PersistentVolumeClaim").PersistentVolumeClaim,
  "apps/v1/Deployment": () => require("kubernetes-models/apps/v1/Deployment").Deployment,
  "batch/v1/Job": () => require("kubernetes-models/batch/v1/Job").Job,
};
let failed = 0;
for (const doc of yaml.loadAll(fs.readFileSync(process.argv[2], "utf8"))) {
  if (!doc) continue;
  const make = kinds[`${doc.apiVersion}/${doc.kind}`];
  if (!make) { console.log(`FAIL no schema for ${doc.apiVersion} ${doc.kind}`); failed++; continue; }
  try { new (make())(doc).validate(); console.log(`ok    ${doc.kind} ${doc.metadata.name}`); }
  catch (e) { console.log(`FAIL  ${doc.kind} ${doc.metadata.name}: ${e.message}`); failed++; }
}
process.exit(failed ? 1 : 0);
