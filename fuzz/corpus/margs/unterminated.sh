DATA="/data/corpus
torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 24 --hidden-size 2048 --num-attention-heads 16
