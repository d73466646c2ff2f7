"""What routes share that is not a route: starting, queueing and reporting jobs (`job_runs`,
`job_queue`) and jobs at the user's optimal data instance (`optimal_instance`). Routes import
services; services import no route and call none back."""
