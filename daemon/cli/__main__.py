import sys

from daemon.cli.main import main

sys.exit(main())
