"""`records`: a minimal task kept in the test tree, registered only while the tests run
(tests/conftest.py), to prove that a task is one folder and one registry line.

It scores whole-record exact match: a model is right on a record when every field of the truth
record equals its prediction's (as text, surrounding white space ignored; an empty cell is
absent). Per model: `records/accuracy` (records right / truth records), per field
`field/<f>/accuracy`, and the records without a prediction (`records/missing`) or without a truth
record (`records/extra`, which do not change the accuracy). Its modules are the roles every task
has: `contract` (ranking), `options` (configuration), `semantics` (reading a chunk of records into
a ledger, and the result), `command` and `outputs` (the `score` command), `engines` (chunks and
Spark), `adapter` (MLflow) and `scorer` (`mlflow.genai`); `cases` gives the tests over the
registry its example.
"""
