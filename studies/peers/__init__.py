"""Peer baselines: GNINA 1.0's CNN scores of the same poses. Importing this package imports nothing: gnina_score
runs in the GNINA environment, where pecan's dependencies are not installed."""
