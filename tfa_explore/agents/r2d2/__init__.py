"""R2D2 (Kapturowski et al. 2019): recurrent replay distributed DQN.

`losses` holds the pure maths of the learner (value rescaling, n-step
double-Q targets, sequence priorities, importance weights, the TD loss).
"""
