"""The real model the agents train: scikit-learn's bundled digits, a NumPy MLP, PS aggregation."""
