"""Outputs: a type made into what a turn may answer (`output`), extraction (`extract`,
`stream`), partial values read as an answer grows, per-field confidence, and the records and
events a run or an extraction reports. Imports the tools' schemas and the shared modules."""
