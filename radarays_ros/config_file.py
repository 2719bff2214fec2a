"""Reading configuration files (YAML) with one-line errors that name the file and what it is."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import ConfigError, yaml_problem


def read_yaml(path: str | Path, what: str) -> Any:
    """The parsed contents of a YAML file; `what` names its role in errors ("radar config", "scenario").

    A missing or unreadable file and bad syntax are a ConfigError on one line (where the parser
    stopped and why); an empty file reads as None."""
    path = Path(path)
    try:
        with path.open() as fh:
            return yaml.safe_load(fh)
    except FileNotFoundError:
        raise ConfigError(f"{what} {path}: file not found") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{what} {path}: not valid YAML ({yaml_problem(exc)})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{what} {path}: cannot be read ({exc})") from None


def parse_scalar(text: str) -> Any:
    """A value typed on a command line (`--set key=value`) or in a parameter string: YAML's reading
    (numbers, booleans, lists, null), except that what Python reads as a number is a number
    (YAML 1.1 leaves `1e-7` and `1E5` as text); anything else stays the text itself."""
    if not isinstance(text, str) or not text.strip():
        return text
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, str):
        try:
            return float(value) if value.strip().lower() not in ("nan", "inf", "-inf", "+inf", "infinity") else value
        except ValueError:
            return value
    return value
