// Placeholder: the CMAF module is built in its own issue.
