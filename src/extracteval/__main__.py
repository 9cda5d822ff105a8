import sys

from extracteval.cli import main

sys.exit(main())
