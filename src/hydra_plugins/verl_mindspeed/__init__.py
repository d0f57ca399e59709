# Hydra imports every module under the hydra_plugins namespace at start-up; keep this package empty.
