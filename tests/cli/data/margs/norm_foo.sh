#!/bin/bash
MODEL_ARGS=(
    --num-layers 24 --hidden-size 2048 --num-attention-heads 16
    --normalization Foo
)
torchrun --nproc-per-node 8 pretrain_gpt.py "${MODEL_ARGS[@]}" --seq-length 2048 --micro-batch-size 1 \
    --vocab-size 50257 --bf16
