#!/usr/bin/env bash
# Run a script written by `parplan launch --format megatron|torchrun|slurm` with torchrun, srun
# and scontrol replaced by stand-ins, and write what pretrain_gpt.py would receive:
#   OUT        its arguments, NUL-separated, exactly as bash expands them
#   OUT.world  the world size torchrun would start (nproc-per-node x nnodes)
# The torchrun stand-in accepts only the options parplan writes; any other is an error.
# Placeholders the scripts require (DATA_PATH, TOKENIZER_MODEL, TRAIN_ITERS, MASTER_ADDR, ...)
# get dummy values. Usage: capture_args.sh SCRIPT OUT
set -euo pipefail
script=$1
out=$2

torchrun() {
    local nproc="" nnodes=1
    while [ $# -gt 0 ]; do
        case $1 in
            --nproc-per-node) nproc=$2; shift 2 ;;
            --nnodes) nnodes=$2; shift 2 ;;
            --node-rank|--master-addr|--master-port|--rdzv-id|--rdzv-backend|--rdzv-endpoint) shift 2 ;;
            */pretrain_gpt.py) shift; break ;;
            *) echo "capture_args: unexpected torchrun argument '$1'" >&2; return 2 ;;
        esac
    done
    [ -n "$nproc" ] || { echo "capture_args: no --nproc-per-node" >&2; return 2; }
    printf '%s\0' "$@" > "$PARPLAN_CAPTURE"
    echo $((nproc * nnodes)) > "$PARPLAN_CAPTURE.world"
}
srun() {
    while [ $# -gt 0 ] && [ "$1" != torchrun ]; do shift; done
    [ $# -gt 0 ] || { echo "capture_args: srun without torchrun" >&2; return 2; }
    shift
    torchrun "$@"
}
scontrol() { echo node0; }
export -f torchrun srun scontrol
export PARPLAN_CAPTURE=$out
export DATA_PATH=/data/corpus_text_document TOKENIZER_MODEL=/data/tokenizer TRAIN_ITERS=10
export MASTER_ADDR=node0 NODE_RANK=0 SLURM_JOB_NODELIST=node0 SLURM_JOB_ID=1 MEGATRON_LM=/megatron
rm -f "$out" "$out.world"
bash "$script"
[ -s "$out" ] || { echo "capture_args: $script did not call torchrun" >&2; exit 1; }
