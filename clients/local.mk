# clients/: libblobclient (public API), client data plane, the blob CLI, examples.
