#!/bin/bash
# a script that runs no Megatron
set -e
echo "preparing"
python tools/preprocess_data.py --input corpus.json --output-prefix corpus
