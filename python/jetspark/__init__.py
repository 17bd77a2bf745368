"""jetspark: Hazelcast Jet's pipeline model on Apache Spark.

Start with :func:`session`; see the README for a tour.
"""

from jetspark._jar import jar_path, package_version
from jetspark._session import JetSession, session
from jetspark.aggregate import AggregateOperation, AggregateOperations
from jetspark.errors import (
    DeadLetter,
    JarNotFoundError,
    JobCancelledError,
    JetSparkError,
    JobFailedError,
    PipelineDefinitionError,
)
from jetspark.job import Job, JobConfig, JobStatus, ProcessingGuarantee
from jetspark.light_job import LightJob
from jetspark.pipeline import (
    BatchStage,
    BatchStageWithKey,
    JoinClause,
    Pipeline,
    SinkStage,
    StageWithKeyAndWindow,
    StageWithWindow,
    StreamSourceStage,
    StreamStage,
    StreamStageWithKey,
)
from jetspark.sinks import Sink, Sinks
from jetspark.sources import KafkaRecord, SimpleEvent, Source, Sources
from jetspark.window import KeyedWindowResult, WindowDefinition, WindowResult

__version__ = package_version()

__all__ = [
    "AggregateOperation",
    "AggregateOperations",
    "BatchStage",
    "BatchStageWithKey",
    "DeadLetter",
    "JarNotFoundError",
    "JetSession",
    "JetSparkError",
    "Job",
    "JobCancelledError",
    "JobConfig",
    "JobFailedError",
    "JobStatus",
    "JoinClause",
    "KafkaRecord",
    "KeyedWindowResult",
    "LightJob",
    "Pipeline",
    "PipelineDefinitionError",
    "ProcessingGuarantee",
    "SimpleEvent",
    "Sink",
    "SinkStage",
    "Sinks",
    "Source",
    "Sources",
    "StageWithKeyAndWindow",
    "StageWithWindow",
    "StreamSourceStage",
    "StreamStage",
    "StreamStageWithKey",
    "WindowDefinition",
    "WindowResult",
    "jar_path",
    "session",
]
