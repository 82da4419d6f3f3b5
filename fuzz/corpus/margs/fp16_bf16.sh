#!/bin/bash
torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16 \
    --seq-length 2048 --micro-batch-size 1 --vocab-size 50257 \
    --fp16 --bf16
