"""Building blocks shared by the agents: models, losses, replay memory,
preprocessing, space discretization and configuration parsing."""
