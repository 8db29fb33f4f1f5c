// Placeholder: the Recorder module is built in its own issue.
