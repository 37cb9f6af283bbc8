"""DiagViB-6: a generator of synthetic images with six controlled factors of variation,
the benchmark studies built on it, and the metrics that expose shortcut learning."""
