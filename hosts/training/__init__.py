"""The real models the agents train: scikit-learn's bundled digits, a NumPy MLP or small CNN
(`models`), PS aggregation."""
