"""backends/numba"""
