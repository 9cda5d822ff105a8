from extracteval.cli import leave, main

leave(main())
