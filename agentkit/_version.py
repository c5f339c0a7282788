"""The installed distribution's version, read once; a checkout that was never installed has
none. The package's face and its traces both read it here."""

from importlib.metadata import PackageNotFoundError, version

try:
    VERSION = version("agentkit")
except PackageNotFoundError:
    VERSION = "0+unknown"
