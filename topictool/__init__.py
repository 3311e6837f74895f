"""topictool: topic models from the command line, with numba kernels."""

__version__ = "0.1.0"
