# Sourced by the medium-scale studies (state-at-key.sh, das-atp.sh).
# medium_run MODEL: the medium AR sweep cell of MODEL (d = 64) with the higher
# test accuracy, from runs/paper-medium/ar or ar-extra (the same cells run by
# a second sweep, e.g. to train them before their turn); fails, saying so,
# when neither holds a finished one.
medium_run() {
  local model=$1 best="" acc=-1
  for cell in runs/paper-medium/ar/${model}__d64__lr* runs/paper-medium/ar-extra/${model}__d64__lr*; do
    [ -f "$cell/result.toml" ] || continue
    local a; a=$(sed -n 's/^eval_acc = //p' "$cell/result.toml")
    if python3 -c "import sys; sys.exit(0 if float('$a') > float('$acc') else 1)"; then best=$cell acc=$a; fi
  done
  [ -n "$best" ] || { echo "no finished medium run of $model in runs/paper-medium/ar or ar-extra" >&2; return 1; }
  echo "$best"
}
