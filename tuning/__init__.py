"""Hyperparameter tuning jobs: a search over hyperparameters that runs ordinary training jobs."""
