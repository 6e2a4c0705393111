import sys

from cntk.keras_compat import main

if __name__ == '__main__':
    sys.exit(main())
