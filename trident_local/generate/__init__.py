"""Answer generation over selected pages: plain VLM call, lenses + synthesis, format gate, extractive CPU default."""
