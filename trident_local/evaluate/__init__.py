"""Evaluation: dataset adapters, pure metric functions over saved runs, and run drivers."""
