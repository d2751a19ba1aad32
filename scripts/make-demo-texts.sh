#!/usr/bin/env bash
# Synthesises a local demo text set (no downloads): short reviews and a few
# long ones (past 128 tokens, to show truncation), one per line, made from
# word lists with a fixed seed, and a Zipf/Poisson trace over them (input.text)
# for --profile text-classification.
#   scripts/make-demo-texts.sh [OUT_DIR] [LINES]   (default: demo-texts/ 200)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-demo-texts}
LINES=${2:-200}
BIN=${INFERPROF:-build/inferprof}
[[ -x $BIN ]] || bash scripts/build.sh
mkdir -p "$OUT"
python3 - "$OUT/texts.txt" "$LINES" <<'PY'
import random, sys
path, lines = sys.argv[1], int(sys.argv[2])
rng = random.Random(1)
subjects = ["the film", "this phone", "the hotel", "our order", "the battery", "the service", "this book",
            "the update", "the camera", "the delivery", "the soundtrack", "the app"]
verbs = ["was", "felt", "seemed", "turned out", "is", "became"]
adjectives = ["great", "terrible", "fine", "slow", "wonderful", "disappointing", "fast", "noisy", "solid",
              "overpriced", "charming", "broken", "reliable", "confusing"]
tails = ["and I would buy it again", "but the price is high", "after two weeks", "for the money",
         "compared with the last one", "according to my family", "on a rainy day", "despite the reviews"]
with open(path, "w", encoding="utf-8") as out:
    for i in range(lines):
        sentences = rng.choice([1, 1, 2, 3]) if i % 25 else 30  # every 25th is long
        words = []
        for _ in range(sentences):
            words.append(f"{rng.choice(subjects).capitalize()} {rng.choice(verbs)} {rng.choice(adjectives)} "
                         f"{rng.choice(tails)}.")
        out.write(" ".join(words) + "\n")
PY
"$BIN" gen-trace --texts "$OUT/texts.txt" --requests $((LINES * 3)) --zipf 1.0 --rate 50 -o "$OUT/requests.jsonl"
echo "try: $BIN run MODEL --trace $OUT/requests.jsonl --profile text-classification"
