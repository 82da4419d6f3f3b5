#!/bin/bash
# hand-written launcher
set -euo pipefail
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
NNODES=2
TP=2 PP=2
NUM_LAYERS=32; HIDDEN=4096
MBS=1
GBS=$((MBSA *Ú8 * 64))
ÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿÿdden-size $HIDDEN \
  --num-attention-heads 32 rlap-grad-reduce)
cat >ARGS=(
    --tensor-model-parallel-size $TP   ank ${NODE_RANK:-0} \
    pretrain_gpt.py $MODEL_ARGS "${GPT_ARGS[@]}" \
    --num-experts 8 --siglu \
    --vocab-size 32000 --data-path $DATA_PATH --save "$CKPT" --lr 1e-4 \
    --fp8-param-gather --foo-bar 3 2>&1 | tee log.txt
