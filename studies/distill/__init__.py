"""distill: PECAN students trained on GNINA 1.0's pose scores, their fit and its transfer to held-out clusters."""
