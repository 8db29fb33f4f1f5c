// Placeholder: the TransportModel module is built in its own issue.
