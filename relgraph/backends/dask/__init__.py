"""backends/dask"""
