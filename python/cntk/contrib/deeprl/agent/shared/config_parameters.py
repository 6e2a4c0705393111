"""Reading agent settings from an INI-style config file.

Each parameter class lists its settings as ``(attribute, section, key, kind,
default)`` rows; a missing file, section or key falls back to the default.
Keys are case-sensitive (``QRepresentation``, not ``qrepresentation``).
"""

import configparser

# How each kind of value is read from a ConfigParser.
_GETTERS = {
    str: configparser.ConfigParser.get,
    int: configparser.ConfigParser.getint,
    float: configparser.ConfigParser.getfloat,
    bool: configparser.ConfigParser.getboolean,
}


class ConfigParameters:
    """Base class: reads the rows of ``SETTINGS`` into attributes."""

    SETTINGS = ()

    def __init__(self, config_file):
        self.config = configparser.ConfigParser()
        self.config.optionxform = str  # keep the keys' case
        self.config.read(config_file)
        for attribute, section, key, kind, default in self.SETTINGS:
            value = _GETTERS[kind](self.config, section, key, fallback=default)
            setattr(self, attribute, value)

    def save(self, config_file):
        """Write the settings that were read (not the defaults) to a file."""
        with open(config_file, 'w') as f:
            self.config.write(f)
