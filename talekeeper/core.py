"""The public import of the application object (`from talekeeper.core import Talekeeper`).

It is defined in `talekeeper.service.app`, inside the layer that uses it, so nothing in
`service/` has to import upwards; the web app, the CLI and tests import it from here.
"""

from talekeeper.service.app import HOME_ENV, Talekeeper, default_data_dir

__all__ = ["HOME_ENV", "Talekeeper", "default_data_dir"]
