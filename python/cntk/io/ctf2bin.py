"""Converts a CNTK Text Format file into a CNTK Binary Format file, with the arguments of CNTK's
Scripts/ctf2bin.py:

    python -m cntk.io.ctf2bin --input data.ctf --header header.txt --chunk_size 33554432 --output data.bin

The header file lists the streams, one per line: ``name alias dense|sparse dimension``.
"""
import argparse
import sys

from ._formats import convert_ctf_to_cbf


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m cntk.io.ctf2bin',
                                     description="Transforms a CNTK Text Format file into CNTK binary format given a header.")
    parser.add_argument('--input', required=True, help="CNTK Text Format file to convert to binary.")
    parser.add_argument('--header', required=True, help="Header file describing each stream in the input.")
    parser.add_argument('--chunk_size', type=int, required=True, help="Chunk size in bytes.")
    parser.add_argument('--output', required=True, help="Name of the output file.")
    parser.add_argument('--precision', choices=['float', 'double'], default='float',
                        help="Floating point precision (double or float). Default is float.")
    args = parser.parse_args(argv)
    try:
        chunks = convert_ctf_to_cbf(args.input, args.output, args.header, args.chunk_size, args.precision)
    except (IOError, ValueError) as e:
        print("ctf2bin: error: %s" % e, file=sys.stderr)
        return 1
    print("wrote %s: %d chunk%s" % (args.output, chunks, '' if chunks == 1 else 's'))
    return 0


if __name__ == '__main__':
    sys.exit(main())
