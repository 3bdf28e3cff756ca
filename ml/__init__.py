"""Flywheel planners and their training: tokenizer, model, chat rendering, backends, SFT, CARE RL, evaluation."""
