# A Performer is imported by <namespace>/<name>.
terraform import gantry_performer.example default/my-performer
