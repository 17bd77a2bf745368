"""jetspark: Hazelcast Jet's pipeline model on Apache Spark.

Start with :func:`session`; see the README for a tour.
"""

from jetspark._jvm import jar_path, package_version
from jetspark._session import JetSession, session
from jetspark.errors import (
    JarNotFoundError,
    JetSparkError,
    JobFailedError,
    PipelineDefinitionError,
)

__version__ = package_version()

__all__ = [
    "JarNotFoundError",
    "JetSession",
    "JetSparkError",
    "JobFailedError",
    "PipelineDefinitionError",
    "jar_path",
    "session",
]
