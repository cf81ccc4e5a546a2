"""Answer generation over selected pages: plain call, lenses + synthesis, format gate, extractive default."""
