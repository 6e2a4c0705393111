"""`python -m cntk convert MODEL OUT.onnx [--opset N]`: a model file OpenCNTK loads (CNTK v2,
CNTK v1 .dnn, ONNX) written as ONNX."""
import argparse
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog='python -m cntk')
    sub = p.add_subparsers(dest='command', required=True)
    c = sub.add_parser('convert', help='write a model file (CNTK v2, v1 .dnn or ONNX) as ONNX')
    c.add_argument('model', help='the model file to read')
    c.add_argument('out', help='the ONNX file to write')
    c.add_argument('--opset', type=int, default=None, help='the ONNX opset to write (default 17)')
    args = p.parse_args(argv)
    from .misc.model_convert import convert_model_file
    try:
        f = convert_model_file(args.model, args.out, args.opset)
    except (IOError, ValueError, NotImplementedError) as e:
        print('convert: %s' % str(e).split('[CALL STACK]')[0].strip(), file=sys.stderr)
        return 1
    print('%s -> %s (%d inputs, %d outputs)' % (args.model, args.out, len(f.arguments), len(f.outputs)))
    return 0


if __name__ == '__main__':
    sys.exit(main())
