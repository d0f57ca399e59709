"""Code that runs inside Ray workers: omegaconf only (importable there through PYTHONPATH)."""

from __future__ import annotations

from omegaconf import DictConfig, OmegaConf

PREFIXES = {"actor": "actor_rollout_ref.actor.megatron", "ref": "actor_rollout_ref.ref.megatron",
            "critic": "critic.megatron"}


def worker_view(actor_rollout_ref: DictConfig, critic: DictConfig) -> dict:
    """What a verl worker reads from the role configs it was sent."""
    assert isinstance(actor_rollout_ref, DictConfig) and isinstance(critic, DictConfig)
    return {
        "actor": OmegaConf.to_container(actor_rollout_ref.actor.megatron.override_transformer_config),
        "ref": OmegaConf.to_container(actor_rollout_ref.ref.megatron.override_transformer_config),
        "critic": OmegaConf.to_container(critic.megatron.override_transformer_config),
        # the 0.6/0.7 worker's repatch argument
        "legacy_repatch": OmegaConf.to_container(
            actor_rollout_ref.actor.megatron.get("override_transformer_config", {})),
    }


class TaskRunner:
    """Like verl's ``TaskRunner.run``: resolve the config received, then hand role configs to workers."""

    def run(self, config: DictConfig, worker) -> dict:
        import ray

        OmegaConf.resolve(config)
        return ray.get(worker.remote(config.actor_rollout_ref, config.critic))
