// Every command module, imported for its registerCommand calls. Add a line here for a new module.
import './rating.ts';
import './lists.ts';
import './settings.ts';
import './admin.ts';
import './serve.ts';
import './setup.ts';
import './model.ts';
import './demo.ts';
import './gguf.ts';
import './serve-model.ts';
import './publish.ts';
import './train.ts';
import './gym.ts';
import './encryption.ts';
import './chat.ts';
import './reward.ts';
