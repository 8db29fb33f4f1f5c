// Placeholder: the Motion module is built in its own issue.
