torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 4 --hidden-size 256 --num-attention-heads 4 \
    --seq-length 512 --micro-batch-size 1 --vocab-size 1000 --bf16 --pipeline-model-parallel-size 2 \
    --pipeline-model-parallel-layout 'Et|t(t|)*2t'
