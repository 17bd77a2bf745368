"""What runs inside Spark's Python workers: the Arrow map functions of the Spark batch engine's Python
UDFs and what they call (fused steps, extractions, user-defined aggregations and windows, rows for
sinks, typed results), and the steps a light job runs in the driver's process.

No module here imports the driver's side (py4j, the session, jobs): a worker unpickles these functions
by their module paths, and the driver builds the UDFs around them (:mod:`jetspark._udf_columns`). (The
package ``jetspark`` itself still loads the driver's modules on import, which import py4j lazily.)
"""
