"""realdock: a leave-one-family-out rescoring benchmark on redocked crystal complexes; ``run`` is the harness the
other studies import (``python -m studies.realdock.run``)."""
