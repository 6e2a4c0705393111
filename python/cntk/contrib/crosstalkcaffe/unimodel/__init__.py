"""The toolkit-neutral model description the converter goes through, and its
instantiation as CNTK functions."""
