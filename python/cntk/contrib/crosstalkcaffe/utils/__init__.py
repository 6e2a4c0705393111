"""Helpers of the Caffe converter: name formatting and configuration files."""
