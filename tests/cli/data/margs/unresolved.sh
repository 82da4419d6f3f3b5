# NUM_LAYERS comes from the environment of the job: parplan cannot know it
torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers "$NUM_LAYERS" --hidden-size 2048 --num-attention-heads 16 \
    --seq-length 2048 --micro-batch-size 1 --vocab-size 50257 --bf16
