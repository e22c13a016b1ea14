import sys

from themisto_ext.cli.main import main

sys.exit(main())
