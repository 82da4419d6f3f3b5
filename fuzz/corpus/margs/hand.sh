#!/bin/bash
# hand-written launcher
set -euo pipefail
export CUDA_DEVICE_MAX_CONNECTIONS=1
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
NNODES=2
TP=2 PP=2
NUM_LAYERS=32; HIDDEN=4096
MBS=1
GBS=$((MBS * 8 * 64))
DATA_PATH=/data/x
MODEL_ARGS="--num-layers ${NUM_LAYERS} --hidden-size $HIDDEN \
  --num-attention-heads 32 --seq-length 4096"
GPT_ARGS=(
    --tensor-model-parallel-size $TP   # tensor parallel
    --pipeline-model-parallel-size "$PP"
    --micro-batch-size $MBS --global-batch-size "$GBS"
    --bf16
    --moe-layer-freq '([0]*1+[1]*31)'
)
GPT_ARGS+=(--use-distributed-optimizer --overlap-grad-reduce)
cat > /tmp/cfg.json <<EOT
{"a": "it's --num-layers 99"}
EOT
if [ -n "${DEBUG:-}" ]; then
  echo "debug"
fi
python tools/preprocess_data.py --input x --output-prefix y
torchrun --nproc_per_node $GPUS_PER_NODE --nnodes=$NNODES --node_rank ${NODE_RANK:-0} \
    pretrain_gpt.py $MODEL_ARGS "${GPT_ARGS[@]}" \
    --num-experts 8 --swiglu \
    --vocab-size 32000 --data-path $DATA_PATH --save "$CKPT" --lr 1e-4 \
    --fp8-param-gather --foo-bar 3 2>&1 | tee log.txt
