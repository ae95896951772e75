import { InProcessBroker } from '../src/in-process/in-process-broker';
import { InProcessTransport } from '../src/in-process/in-process-transport';
import { transportContract } from './transport-contract';

describe('in-process transport', () => {
  let broker: InProcessBroker;
  let main: InProcessTransport;
  beforeEach(() => {
    broker = new InProcessBroker();
    main = new InProcessTransport(broker);
  });
  afterEach(() => main.close());

  transportContract({
    transport: () => main,
    peer: () => Promise.resolve(new InProcessTransport(broker)),
  });
});
