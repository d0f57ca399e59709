"""How verl-mindspeed plugs into a verl launch: the Hydra callback, the drop-in launcher, verl version differences."""
